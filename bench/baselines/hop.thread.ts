/** A task that does nothing, shaped like the worker's (ids and the input as JSON): the thread hop alone. */
export default function hop({ inputJson }: { taskId: number; name: string; inputJson: string; attempt: number }): { ok: true; value: unknown } {
  return { ok: true, value: JSON.parse(inputJson) };
}
