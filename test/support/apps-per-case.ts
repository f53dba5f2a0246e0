import { type AppProcess, startApp } from './apps';

// why a file of its own: it uses Jest's afterEach, and apps.ts is compiled into the bench too
// (`tsc -p bench/tsconfig.json`, types: node only), where Jest's globals do not exist.

/**
 * startApp for the cases of a describe block: each app a case starts is killed (SIGKILL) after that
 * case, whether it passed or not. Call it in the describe block.
 */
export function appsPerCase(): (...args: Parameters<typeof startApp>) => Promise<AppProcess> {
  const started: AppProcess[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((app) => app.stop('SIGKILL')));
  });
  return async (...args) => {
    const app = await startApp(...args);
    started.push(app);
    return app;
  };
}
