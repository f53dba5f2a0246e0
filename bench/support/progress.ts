/** Progress lines while the bench runs: elapsed time, scenario, round, and what is being measured. */
export class Progress {
  private readonly started = Date.now();

  constructor(private readonly write: (line: string) => void = (line) => process.stdout.write(`${line}\n`)) {}

  get elapsedS(): number {
    return (Date.now() - this.started) / 1000;
  }

  log(message: string): void {
    const s = Math.floor(this.elapsedS);
    const stamp = `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
    this.write(`[${stamp}] ${message}`);
  }

  step(scenario: string, round: number, rounds: number, what: string): void {
    this.log(`${scenario} · round ${round}/${rounds} · ${what}`);
  }
}
