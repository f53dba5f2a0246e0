import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { coreJobs } from '@app/jobs';
import { readRepoFile, ROOT } from './deploy/app-source';

/**
 * The README and the guides are the product's face: its job types and commands follow the code.
 * (The configuration guide and the links are checked by test/docs-links.e2e-spec.ts.)
 */
describe('README and docs/', () => {
  const pages = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

  it('documents every shipped job type', () => {
    const table = readRepoFile('docs/job-types.md').split(/\n## /).find((s) => s.startsWith('The job types')) ?? '';
    for (const def of coreJobs) expect(table).toMatch(new RegExp(`^\\| \`${def.name}\` \\|`, 'm'));
  });

  it('documents every npm script it tells people to run', () => {
    const scripts = Object.keys(JSON.parse(readRepoFile('package.json')).scripts as Record<string, string>);
    for (const page of pages) {
      for (const [, name] of readRepoFile(page).matchAll(/npm (?:run )?([a-z]+(?::[a-z]+)?)/g)) {
        if (['ci', 'install', 'test', 'start'].includes(name) || scripts.includes(name)) continue;
        throw new Error(`${page} mentions "npm run ${name}", which package.json does not define`);
      }
    }
  });
});
