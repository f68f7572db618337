import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../../bin/tallyhouse.js', import.meta.url));
const VERSION = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;

/**
 * The CLI's arguments, through the real binary: help and version exit 0 and do nothing else (the
 * data directory is never created, so no engine started), and a bad argument exits 2 with the
 * usage. The commands come from the top-level help, so a new command is covered here too.
 */
describe('tallyhouse CLI arguments', function () {
  this.timeout(300_000);
  const dataDir = join(tmpdir(), `tallyhouse-cli-args-${process.pid}-never-created`);
  const cli = async (...args: string[]) => {
    const r = await run(process.execPath, [BIN, ...args], { env: { ...process.env, DATA_DIR: dataDir, PORT: 'not-read-by-help' }, timeout: 60_000 }).then(
      (ok) => ({ code: 0, ...ok }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    return { code: r.code, stdout: r.stdout, stderr: r.stderr };
  };
  let commands: string[] = [];

  before(async () => {
    const help = await cli('--help');
    expect(help.code).to.equal(0);
    const section = help.stdout.split('commands:\n')[1].split('\n\n')[0];
    commands = section.split('\n').map((line) => line.trim().split(/\s{2,}/)[0]);
  });
  afterEach(() => expect(existsSync(dataDir), 'the data directory (an engine started)').to.equal(false));

  it('lists the commands in --help and -h, and prints the version with --version and -V', async () => {
    expect(commands).to.include.members(['serve', 'migrate', 'token create', 'token list', 'token revoke', 'seed']);
    expect((await cli('-h')).stdout).to.include('commands:');
    expect(await cli('--version')).to.deep.include({ code: 0, stdout: `${VERSION}\n` });
  });

  it('prints each command\'s help and exits 0 without running it', async () => {
    for (const command of commands) {
      const r = await cli(...command.split(' '), command === 'serve' ? '-h' : '--help');
      expect(r.code, `${command} ${r.stderr}`).to.equal(0);
      expect(r.stdout, command).to.match(new RegExp(`^usage: tallyhouse ${command}`));
    }
  });

  it('exits 2 with the usage on an unknown option, a missing value or a stray argument', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['serve', '--nmae', 'x'], /unknown option --nmae[\s\S]*usage: tallyhouse serve/],
      [['token', 'create', '--org', '--json'], /--org needs a value[\s\S]*usage: tallyhouse token create/],
      [['token', 'list', '--nmae', 'ci'], /unknown option --nmae[\s\S]*usage: tallyhouse token list/],
      [['token', 'revoke', 'a', 'b'], /unexpected argument "b"/],
      [['seed', '--responses'], /--responses needs a value[\s\S]*usage: tallyhouse seed/],
      [['migrate', 'now'], /unexpected argument "now"/],
      [[], /usage: tallyhouse <command>/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(...args);
      expect(r.code, args.join(' ')).to.equal(2);
      expect(r.stderr, args.join(' ')).to.match(message);
    }
  });
});
