import { expect } from 'chai';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult, type IModule } from 'dependency-cruiser';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The layers of src/, lowest first (docs/architecture.md, "Layers"): a file imports files of its
 * own layer or of a lower one, never of a higher one. `match` is tried in `MATCH_ORDER`, first
 * match wins: a feature's edges (its routes.ts, a cli.ts) sit above its folder.
 */
const LAYERS = [
  { name: 'foundation', match: /^src\/(errors|chars|validation|config|log|uuid|ports)\.ts$|^src\/(time|types)\// },
  { name: 'clickhouse', match: /^src\/clickhouse\// },
  { name: 'shared', match: /^src\/(query|claims|metrics)\// },
  { name: 'features', match: /^src\/(events|responses|releases|idempotency|tokens)\// },
  { name: 'analysis', match: /^src\/analysis\// },
  { name: 'server', match: /^src\/server\// },
  { name: 'routes', match: /^src\/routes\.ts$|^src\/.+\/routes?\.ts$/ },
  { name: 'commands', match: /^src\/main\.ts$|^src\/(cli|seed)\/|^src\/.+\/cli\.ts$/ },
] as const;
type LayerName = (typeof LAYERS)[number]['name'];
const MATCH_ORDER: readonly LayerName[] = ['commands', 'server', 'routes', 'analysis', 'features', 'shared', 'clickhouse', 'foundation'];
const rank = (name: LayerName) => LAYERS.findIndex((l) => l.name === name);

function layerOf(file: string): LayerName | undefined {
  return MATCH_ORDER.find((name) => LAYERS[rank(name)].match.test(file));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return sourceFiles(path);
    return /\.(ts|js)$/.test(e.name) ? [path] : [];
  });
}

/**
 * The import graph of src/ (dependency-cruiser resolves each import; type-only imports count: a
 * cycle of types is still two files that cannot be read one without the other).
 */
async function srcGraph(): Promise<IModule[]> {
  const result = await cruise(['src'], { baseDir: ROOT, tsPreCompilationDeps: true, doNotFollow: { path: 'node_modules' } });
  return (result.output as ICruiseResult).modules.filter((m) => m.source.startsWith('src/'));
}

/** A file's folder: `src/<folder>` for a file in one, the file itself for one directly in src/. */
const folderOf = (file: string) => file.split('/').slice(0, 2).join('/');

/**
 * The cycles between folders of src/: each is the folders of one strongly connected component of
 * the folder graph, with the file imports that make its edges. Only imports from the files below
 * the routes layer count: a folder's edges (its routes.ts, a cli.ts) sit above every folder.
 */
function folderCycles(modules: readonly IModule[]): string[][] {
  const edges = new Map<string, Map<string, string[]>>();
  for (const m of modules) {
    const from = layerOf(m.source);
    if (!from || rank(from) >= rank('routes')) continue;
    for (const d of m.dependencies) {
      const [a, b] = [folderOf(m.source), folderOf(d.resolved)];
      if (!d.resolved.startsWith('src/') || a === b) continue;
      if (!edges.has(a)) edges.set(a, new Map());
      const files = edges.get(a)!.get(b) ?? [];
      edges.get(a)!.set(b, [...files, `${m.source} -> ${d.resolved}`]);
    }
  }
  const reach = (start: string) => {
    const seen = new Set<string>();
    const todo = [start];
    while (todo.length) for (const next of edges.get(todo.pop()!)?.keys() ?? []) if (!seen.has(next)) seen.add(next), todo.push(next);
    return seen;
  };
  const reachable = new Map([...edges.keys()].map((f) => [f, reach(f)]));
  const cycles: string[][] = [];
  for (const [folder, ahead] of reachable) {
    const component = [...ahead].filter((f) => reachable.get(f)?.has(folder)).sort();
    if (component.length > 1 && component[0] === folder) {
      cycles.push(component.flatMap((a) => component.flatMap((b) => edges.get(a)?.get(b) ?? [])));
    }
  }
  return cycles;
}

describe('import graph of src/: layers and no cycle', function () {
  this.timeout(60_000);
  let modules: IModule[];
  before(async () => {
    modules = await srcGraph();
  });

  it('holds every source file, each in one layer', () => {
    const files = sourceFiles('src');
    expect(modules.map((m) => m.source).sort()).to.include.members(files);
    expect(files.filter((f) => layerOf(f) === undefined), 'files in no layer (add them to LAYERS and docs/architecture.md)').to.deep.equal([]);
    // The graph is the real one: an edge every read depends on is in it.
    const source = modules.find((m) => m.source === 'src/events/read/source.ts')!;
    expect(source.dependencies.map((d) => d.resolved)).to.include('src/query/selection.ts');
  });

  it('has no import from a lower layer up to a higher one', () => {
    const upward: string[] = [];
    for (const m of modules) {
      const from = layerOf(m.source);
      for (const d of m.dependencies) {
        if (!d.resolved.startsWith('src/')) continue;
        const to = layerOf(d.resolved);
        if (from && to && rank(to) > rank(from)) upward.push(`${m.source} (${from}) imports ${d.resolved} (${to})`);
      }
    }
    expect(upward, 'upward imports').to.deep.equal([]);
  });

  it('has no cycle between files', () => {
    const cycles = new Set<string>();
    for (const m of modules) {
      for (const d of m.dependencies) {
        if (d.circular) cycles.add([m.source, ...(d.cycle ?? []).map((c) => c.name)].join(' -> '));
      }
    }
    expect([...cycles], 'import cycles').to.deep.equal([]);
  });

  it('has no cycle between folders', () => {
    // Release impact reads survey responses and events, which mark releases: it lives in
    // src/analysis/, above the three, and not in src/releases/ (docs/architecture.md, "Layers").
    expect(folderCycles(modules), 'folder cycles (the imports that make each)').to.deep.equal([]);
  });
});
