// The client example of docs/api.md ("Calling it from another service"), kept here so `npm run lint`
// compiles it; test/client.e2e-spec.ts checks the guide shows it unchanged.
import { JobsClient, ProblemError } from '@app/client';

const jobs = new JobsClient({ baseUrl: 'http://nest-offload-api:3000', apiKey: process.env.JOBS_API_KEY });

export async function fibonacci(n: number): Promise<number> {
  const view = await jobs.submitAndWait('fibonacci', { n }, { waitSeconds: 10 });
  if (view.status === 'completed') return view.result; // typed by fibonacci's output schema
  throw new Error(view.status === 'failed' || view.status === 'cancelled' ? view.error.message : 'not done in 10 s');
}

export async function fibonacciWithProgress(n: number): Promise<number> {
  const job = await jobs.submit('fibonacci', { n }); // { n: '10' } does not compile
  for await (const event of jobs.events(job)) {
    if (event.event === 'progress') console.log(`${event.progress}%`);
    else if (event.event === 'completed') return event.job.result; // a number, as fibonacci declares
    else throw new Error(`${event.job.error.code}: ${event.job.error.message}`);
  }
  throw new Error('the stream ended early');
}

export async function cancelQuietly(id: string): Promise<void> {
  try {
    await jobs.cancel(id);
  } catch (error) {
    if (!(error instanceof ProblemError && error.code === 'JOB_ALREADY_FINISHED')) throw error;
  }
}
