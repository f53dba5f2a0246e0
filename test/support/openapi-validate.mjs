// Validates the OpenAPI document on stdin with @seriousme/openapi-schema-validator (an ES module,
// which Jest's CommonJS runtime cannot load) and prints its result as JSON.
import { Validator } from '@seriousme/openapi-schema-validator';
import { text } from 'node:stream/consumers';

const validator = new Validator();
const result = await validator.validate(JSON.parse(await text(process.stdin)));
process.stdout.write(JSON.stringify({ ...result, version: validator.version }));
