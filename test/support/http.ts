/** Small fetch helpers for the API under test. */
export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export async function request<T = any>(url: string, init: RequestInit & { json?: unknown } = {}): Promise<Reply<T>> {
  const { json, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (json !== undefined) headers.set('content-type', 'application/json');
  const res = await fetch(url, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, headers: res.headers, body: body as T };
}

/** POST /v1/jobs/{type}; `wait` sets `Prefer: wait=N`. */
export function submit<T = any>(api: string, type: string, input: unknown, options: { wait?: number; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...options.headers };
  if (options.wait !== undefined) headers.prefer = `wait=${options.wait}`;
  return request<T>(`${api}/v1/jobs/${type}`, { method: 'POST', json: input, headers });
}

/**
 * A completed job's JSON result: the view's `result`, or, when it went to the blob store (over
 * 64 KiB), its `result.json` file downloaded (a 303 to S3 followed).
 */
export async function resultOf<T = any>(api: string, view: { result?: T; files?: Array<{ name: string; url: string }> }, headers?: Record<string, string>): Promise<T> {
  const file = view.files?.find((f) => f.name === 'result.json');
  if (!file) return view.result as T;
  const res = await fetch(`${api}${file.url}`, { headers });
  if (!res.ok) throw new Error(`${file.url}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

export function getJob<T = any>(api: string, id: string, headers?: Record<string, string>) {
  return request<T>(`${api}/v1/jobs/${id}`, { headers });
}

/** Reads a Server-Sent Events stream to its end; returns each event's name and parsed data. */
export async function readEvents(url: string, timeoutMs = 20_000, headers?: Record<string, string>): Promise<Array<{ event: string; data: any }>> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers });
  if (!res.ok) throw new Error(`events: HTTP ${res.status}`);
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((block) => block.includes('event:'))
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)![1];
      const data = /^data: (.*)$/m.exec(block)![1];
      return { event, data: JSON.parse(data) };
    });
}
