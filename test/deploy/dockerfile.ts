export interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

export interface Stage {
  readonly name?: string;
  /** The image or earlier stage this stage builds FROM. */
  readonly base: string;
  readonly instructions: Instruction[];
}

/** Just enough of a Dockerfile parser for these tests: stages and their instructions. */
export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  for (const line of lines.map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))) {
    const [, keyword, args] = /^(\S+)\s*(.*)$/.exec(line)!;
    if (keyword.toUpperCase() === 'FROM') {
      const [base, as, name] = args.split(/\s+/).filter((word) => !word.startsWith('--'));
      stages.push({ base, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
    } else {
      if (!stages.length) continue; // ARG before the first FROM
      stages.at(-1)!.instructions.push({ keyword: keyword.toUpperCase(), args });
    }
  }
  return stages;
}

/** A stage's instructions preceded by those of the stages it builds on: what the final image inherits. */
export function inheritedInstructions(stages: Stage[], stage: Stage): Instruction[] {
  const parent = stages.find((s) => s.name !== undefined && s.name === stage.base);
  return [...(parent ? inheritedInstructions(stages, parent) : []), ...stage.instructions];
}

/** The value a later instruction of `keyword` overrides (USER, CMD, EXPOSE…), or undefined. */
export function lastOf(instructions: Instruction[], keyword: string): string | undefined {
  return instructions.filter((i) => i.keyword === keyword).at(-1)?.args;
}

/** `ENV A=1 B=2` (and the legacy `ENV A 1`) as name/value pairs. */
export function envOf(instructions: Instruction[]): Map<string, string> {
  const env = new Map<string, string>();
  for (const { args } of instructions.filter((i) => i.keyword === 'ENV')) {
    if (!args.includes('=')) {
      const [name, ...value] = args.split(/\s+/);
      env.set(name, value.join(' '));
      continue;
    }
    for (const [, name, value] of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)) {
      env.set(name, value.replace(/^"|"$/g, ''));
    }
  }
  return env;
}
