/** Seeded PRNG (mulberry32) so that generated fixtures are the same on every run. */
export function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** ISO 8601 UTC with microseconds, as the API returns timestamps. */
export const isoMicros = (ms: number, micros = 0) => `${new Date(ms).toISOString().slice(0, 19)}.${String((ms % 1000) * 1000 + micros).padStart(6, '0')}Z`;
