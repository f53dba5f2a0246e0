import { coreJobs } from '@app/jobs';
import { readAcceptedEnv, readRepoFile } from './deploy/app-source';

/** The README is the product's face: its configuration table and job types follow the code. */
describe('README', () => {
  const readme = readRepoFile('README.md');
  const section = (title: string) => readme.split(/\n## /).find((s) => s.startsWith(title)) ?? '';

  it('documents every environment variable the apps accept, and no other', () => {
    const table = section('Configuration');
    const documented = new Set([...table.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]));
    const accepted = readAcceptedEnv().names;
    expect([...accepted].filter((name) => !documented.has(name))).toEqual([]);
    expect([...documented].filter((name) => !accepted.has(name))).toEqual([]);
  });

  it('documents every shipped job type', () => {
    const api = section('API');
    for (const def of coreJobs) expect(api).toMatch(new RegExp(`^\\| \`${def.name}\` \\|`, 'm'));
  });

  it('documents every npm script it tells people to run', () => {
    const scripts = Object.keys(JSON.parse(readRepoFile('package.json')).scripts as Record<string, string>);
    for (const [, name] of readme.matchAll(/npm (?:run )?([a-z]+(?::[a-z]+)?)/g)) {
      if (['ci', 'install', 'test', 'start'].includes(name) || scripts.includes(name)) continue;
      throw new Error(`README mentions "npm run ${name}", which package.json does not define`);
    }
  });
});
