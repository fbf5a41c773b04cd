// Public surface of protocol/: zod schemas and inferred types only.
export * from './errors.js';
export * from './manifest.js';
export * from './task.js';
export * from './wire.js';
export * from './registration.js';
