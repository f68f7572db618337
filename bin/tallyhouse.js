#!/usr/bin/env node
// Runs the TypeScript entry point through tsx's loader, so the bin works from a plain clone.
import { register } from 'tsx/esm/api';
register();
await import('../src/main.ts');
