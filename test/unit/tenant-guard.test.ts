import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { loadMigrations } from '../../src/clickhouse/migrations.ts';
import { ParamBag } from '../../src/clickhouse/sql.ts';
import { CROSS_ORG_TABLE, TENANT_TABLES, TenantOrg, orgsCondition, tokensOfOrg } from '../../src/clickhouse/tenant.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const SRC = join(ROOT, 'src');
/** The one module that may write an organization condition. */
const GUARD = join(SRC, 'clickhouse', 'tenant.ts');

/**
 * An organization condition in SQL text: `org_id =`, `org_id !=`, `org_id IN`, `org_id NOT IN`,
 * `x.org_id = ...`, the reversed `... = org_id`, and org_id as an argument of a comparing function.
 */
const ORG_CONDITIONS = [
  /\borg_id\s*(?:[=!<>]=?|<>|(?:NOT\s+)?IN\b|(?:NOT\s+)?LIKE\b|IS\s+NOT\s+DISTINCT\b)/i,
  /(?:[=<>]|\bIN)\s*\(?\s*(?:\w+\.)?org_id\b/i,
  /\b(?:equals|notEquals|has|hasAny|in|notIn|indexOf)\s*\((?:[^;]{0,200}?,\s*)?(?:\w+\.)?org_id\s*[,)]/i,
];

/** `file:line: text` of each organization condition in a string or template literal of `source` (comments are not literals). */
function orgConditions(file: string, source: string): string[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      const text = node.text;
      for (const re of ORG_CONDITIONS) {
        const m = re.exec(text);
        if (!m) continue;
        const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1 + (text.slice(0, m.index).match(/\n/g)?.length ?? 0);
        found.push(`${file}:${line}: ${m[0]}`);
        break;
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** An org_id column in a CREATE TABLE: UUID, or LowCardinality(UUID) (schema/281). */
const ORG_COLUMN = /\borg_id\s+(?:UUID\b|LowCardinality\s*\(\s*UUID\s*\))/i;

describe('tenant guard (src/clickhouse/tenant.ts)', () => {
  it('no organization condition is written in SQL outside the guard module', () => {
    const files = sourceFiles(SRC).filter((f) => f !== GUARD);
    expect(files.length).to.be.greaterThan(100);
    const found = files.flatMap((f) => orgConditions(relative(ROOT, f), readFileSync(f, 'utf8')));
    expect(found, `organization conditions written by hand (take them from src/clickhouse/tenant.ts):\n${found.join('\n')}`).to.deep.equal([]);
  });

  it('the scan finds a condition in strings and templates, reversed or in a function, and not in comments', () => {
    const source = [
      '// WHERE org_id = {org:UUID} in a comment',
      '/** `FROM events WHERE org_id = ...` */',
      "const a = 'SELECT 1 FROM t WHERE org_id = {org:UUID}';",
      'const b = `SELECT 1 FROM t WHERE x = 1 AND org_id IN ${p}`;',
      'const c = `SELECT 1 FROM t AS r WHERE ${p} = r.org_id`;',
      "const d = 'SELECT 1 FROM t WHERE has({orgs:Array(UUID)}, org_id)';",
      "const e = ['org_id', 'id'];",
      "const f = 'SELECT {org:UUID} AS org_id, toString(org_id) FROM t';",
    ].join('\n');
    expect(orgConditions('x.ts', source).map((f) => f.split(':').slice(0, 2).join(':'))).to.deep.equal(['x.ts:3', 'x.ts:4', 'x.ts:5', 'x.ts:6']);
  });

  it('every table of the schema with an org_id column is a tenant table, except the named cross-org one', () => {
    const statements = loadMigrations().flatMap((m) => m.statements);
    const created = new Map<string, string>();
    for (const s of statements) {
      const create = /^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)/i.exec(s);
      if (create) created.set(create[1], s);
      const drop = /^\s*DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?(\w+)/i.exec(s);
      if (drop) created.delete(drop[1]);
    }
    const withOrg = [...created].filter(([, s]) => ORG_COLUMN.test(s)).map(([t]) => t);
    expect(withOrg).to.include(CROSS_ORG_TABLE);
    expect([...TENANT_TABLES].sort()).to.deep.equal(withOrg.filter((t) => t !== CROSS_ORG_TABLE).sort());
  });

  it('an org_id column is found as UUID or LowCardinality(UUID), not in another column\'s name or type', () => {
    const found = ['(org_id UUID, id UUID)', '(org_id LowCardinality(UUID), id UUID)', '(\n    org_id      LowCardinality( UUID ),', '(org_id UUID)'];
    const not = ['(org_ids Array(UUID))', '(org_id String)', '(owner_org_id UUID)', '(org_id LowCardinality(String))'];
    expect(found.filter((s) => !ORG_COLUMN.test(s))).to.deep.equal([]);
    expect(not.filter((s) => ORG_COLUMN.test(s))).to.deep.equal([]);
  });

  it('builds the head, the condition and the multi-org condition with the organization as a parameter', () => {
    const bag = new ParamBag();
    const org = new TenantOrg('0b9f3bde-3c1e-4b8e-9f00-000000000001', bag);
    expect(org.from('survey_rollup', { final: true, joins: ['ARRAY JOIN g_channel_id AS c'], prewhere: 'start > 0' }))
      .to.equal(`FROM survey_rollup FINAL ARRAY JOIN g_channel_id AS c PREWHERE start > 0 WHERE org_id = ${org.param}`);
    expect(org.condition('events')).to.equal(`org_id = ${org.param}`);
    const orgs = orgsCondition('events', ['0b9f3bde-3c1e-4b8e-9f00-000000000002'], bag);
    const tokens = tokensOfOrg(undefined, bag);
    expect(bag.toParams()).to.deep.equal({ p0: '0b9f3bde-3c1e-4b8e-9f00-000000000001', p1: ['0b9f3bde-3c1e-4b8e-9f00-000000000002'], p2: null });
    expect(orgs).to.equal('org_id IN {p1:Array(UUID)}');
    expect(tokens).to.equal('({p2:Nullable(UUID)} IS NULL OR org_id = {p2:Nullable(UUID)})');
  });
});
