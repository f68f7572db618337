import { expect } from 'chai';
import { UsageError } from '../../src/cli/args.ts';
import { parseCount, parseSeedArgs } from '../../src/seed/args.ts';

const ORG = '0b6f3c52-4a0e-4c47-9d8e-2f4f3f0b9a11';

describe('seed arguments', () => {
  describe('parseCount', () => {
    const cases: Array<[string, number | undefined]> = [
      ['1', 1],
      ['10000', 10_000],
      ['10_000', 10_000],
      ['10,000,000', 10_000_000],
      ['500k', 500_000],
      ['500K', 500_000],
      ['10M', 10_000_000],
      ['1.5m', 1_500_000],
      [' 42 ', 42],
      ['', undefined],
      ['-5', undefined],
      ['1e6', undefined],
      ['1.5', undefined],
      ['10_00', undefined],
      ['0.0001k', undefined],
      ['ten', undefined],
      ['99999999999999999999', undefined],
    ];
    for (const [raw, expected] of cases) {
      it(`${JSON.stringify(raw)} -> ${expected}`, () => expect(parseCount(raw)).to.equal(expected));
    }
  });

  it('takes every option, in both --flag value and --flag=value forms', () => {
    expect(parseSeedArgs(['--responses', '10M', `--org=${ORG.toUpperCase()}`, '--surveys', '7', '--days=30', '--seed', '3'])).to.deep.equal({
      responses: 10_000_000,
      events: 0,
      orgId: ORG,
      orgGenerated: false,
      surveys: 7,
      days: 30,
      seed: 3,
    });
  });

  it('takes --events alone or with --responses', () => {
    expect(parseSeedArgs(['--events', '10M'])).to.include({ events: 10_000_000, responses: 0, days: 90 });
    expect(parseSeedArgs(['--events', '5k', '--responses', '2k', '--days', '7'])).to.include({ events: 5000, responses: 2000, days: 7 });
  });

  it('defaults to 5 surveys over 90 days, seed 0, and a new random org', () => {
    const a = parseSeedArgs(['--responses', '1000']);
    expect(a).to.include({ responses: 1000, surveys: 5, days: 90, seed: 0, orgGenerated: true });
    expect(a.orgId).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseSeedArgs(['--responses', '1000']).orgId).to.not.equal(a.orgId);
  });

  const bad: Array<[string[], RegExp]> = [
    [[], /--responses or --events is required/],
    [['--surveys', '3'], /--responses or --events is required/],
    [['--events', '0'], /--events must be a whole number from 1 to 1000000000, got "0"/],
    [['--responses'], /--responses needs a value/],
    [['--responses', '0'], /--responses must be a whole number from 1 to 100000000, got "0"/],
    [['--responses', 'lots'], /--responses must be a whole number .* got "lots"/],
    [['--responses', '200M'], /--responses must be a whole number from 1 to 100000000, got "200M"/],
    [['--responses', '-3'], /--responses needs a value \(for a value starting with "-", write --responses=<value>\)/],
    [['--responses=-3'], /--responses must be a whole number/],
    [['--responses', '10', '--surveys', '0'], /--surveys must be a whole number from 1 to 100, got "0"/],
    [['--responses', '10', '--surveys', '101'], /--surveys must be a whole number from 1 to 100/],
    [['--responses', '10', '--days', '0'], /--days must be a whole number from 1 to 3650, got "0"/],
    [['--responses', '10', '--days', '3651'], /--days must be a whole number from 1 to 3650/],
    [['--responses', '10', '--days', '1.5'], /--days must be a whole number/],
    [['--responses', '10', '--seed', 'x'], /--seed must be a whole number/],
    [['--responses', '10', '--org', 'acme'], /--org must be an organization UUID, e\.g\. .*, got "acme"/],
    [['--responses', '10', '--org'], /--org needs a value/],
    [['--responses', '10', '--nmae', 'x'], /unknown option --nmae/],
    [['--responses', '10', '--orgs', ORG], /unknown option --orgs/],
    [['--responses', '10', 'extra'], /unexpected argument "extra"/],
  ];
  for (const [argv, message] of bad) {
    it(`rejects ${JSON.stringify(argv)} with a UsageError naming the problem`, () => {
      expect(() => parseSeedArgs(argv)).to.throw(UsageError, message);
    });
  }

  it('shows the usage when an option is missing or unknown', () => {
    expect(() => parseSeedArgs([])).to.throw(UsageError, /usage: tallyhouse seed \[--responses N\] \[--events N\]/);
    expect(() => parseSeedArgs(['--responses', '1', '--bogus', '2'])).to.throw(UsageError, /--days D/);
  });
});
