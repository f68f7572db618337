// The embedded engine process: runs `clickhouse local` from the chdb engine library as a real
// ClickHouse HTTP server. Plain JavaScript, so that it starts without a TypeScript loader.
//
// argv: the clickhouse-local arguments. The trailing query reads stdin, which keeps the server
// alive exactly as long as the parent holds the pipe; when the parent closes it (or dies), the
// query ends, in-flight HTTP queries finish, and the process exits.
//
// ffi-rs, not koffi: ClickHouse's stack-size check rejects koffi's separate stack.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { libchdbPath } = require('chdb/libchdb');
const ffi = require('ffi-rs');

ffi.open({ library: 'chdb', path: libchdbPath() });
const argv = ['clickhouse', ...process.argv.slice(2)];
ffi.load({
  library: 'chdb',
  funcName: 'chdb_query_cmdline',
  retType: ffi.DataType.External,
  paramsType: [ffi.DataType.I32, ffi.DataType.StringArray],
  paramsValue: [argv.length, argv],
});
process.exit(0);
