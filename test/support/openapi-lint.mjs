// Lints the OpenAPI document on stdin with Redocly's `recommended` ruleset (@redocly/openapi-core,
// an ES module, which Jest's CommonJS runtime cannot load) and prints its problems as JSON.
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { text } from 'node:stream/consumers';

const problems = await lintFromString({
  source: await text(process.stdin),
  // why a made-up file: the linter names locations by file; nothing is read from it.
  absoluteRef: '/openapi.json',
  config: await createConfig({ extends: ['recommended'] }),
});
const located = (p) => p.location[0]?.pointer ?? '';
process.stdout.write(JSON.stringify(problems.map((p) => ({ rule: p.ruleId, severity: p.severity, message: p.message, pointer: located(p) }))));
