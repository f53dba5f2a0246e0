'use strict';
/**
 * Preloaded into an app with `--require` (NODE_OPTIONS): the packages named in HIDE_PACKAGES
 * (comma-separated) cannot be resolved, as in a production install that left the dev dependencies
 * out. Not part of the apps.
 */
const Module = require('node:module');

const hidden = (process.env.HIDE_PACKAGES || '').split(',').filter(Boolean);
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (hidden.some((name) => request === name || request.startsWith(`${name}/`))) {
    throw Object.assign(new Error(`Cannot find module '${request}' (hidden by test/support/hide-packages.js)`), { code: 'MODULE_NOT_FOUND' });
  }
  return resolve.call(this, request, ...rest);
};
