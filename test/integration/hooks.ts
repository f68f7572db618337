import { stopSharedEngine } from './shared-engine.ts';

/** Root hooks: the shared engine stops once, after every suite has run. */
export const mochaHooks = {
  async afterAll(this: unknown) {
    await stopSharedEngine();
  },
};
