// Stream changes from vstreamd, save the resume position after each transaction, and resume
// from it on the next run.
//
//   node examples/node/stream.js --server 127.0.0.1:15991 --position-file pos.json [--table T] [--max-rows N]
'use strict';
const fs = require('fs');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

function flags(argv) {
  const out = { server: '127.0.0.1:15991', table: '', maxRows: 0, token: process.env.VSTREAM_TOKEN || '' };
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (k === '--server') out.server = v;
    else if (k === '--position-file') out.positionFile = v;
    else if (k === '--table') out.table = v;
    else if (k === '--max-rows') out.maxRows = Number(v);
    else if (k === '--token') out.token = v;
    else throw new Error(`unknown flag ${k}`);
  }
  if (!out.positionFile) throw new Error('--position-file is required');
  return out;
}

const args = flags(process.argv.slice(2));
const protoDir = path.join(__dirname, '..', '..', 'proto');
const def = protoLoader.loadSync('vstream/v1/vstream.proto', {
  includeDirs: [protoDir],
  enums: String,
  longs: Number,
  defaults: true,
});
const api = grpc.loadPackageDefinition(def);
const client = new api.vstream.v1.VStreamService(args.server, grpc.credentials.createInsecure());

let vgtid = { shardGtids: [{ gtid: 'current' }] };
if (fs.existsSync(args.positionFile)) vgtid = JSON.parse(fs.readFileSync(args.positionFile, 'utf8'));
const start = { vgtid };
if (args.table) start.filter = { rules: [{ match: args.table }] };

const md = new grpc.Metadata();
if (args.token) md.set('authorization', `Bearer ${args.token}`);
const call = client.Stream(md);
// The stream stays open after the client's last message: acks are optional.
call.write({ start });
call.end();

let rows = 0;
let inTxn = false;
call.on('data', (resp) => {
  for (const ev of resp.events) {
    if (ev.type === 'ROW') {
      for (const rc of ev.rowEvent.rowChanges) {
        const row = rc.after || rc.before;
        const values = [];
        let off = 0;
        for (const n of row.lengths) {
          values.push(n < 0 ? 'NULL' : row.values.subarray(off, off + n).toString('utf8'));
          off += Math.max(n, 0);
        }
        console.log(`ROW ${ev.rowEvent.tableName} ${values.join(',')}`);
        rows++;
      }
    } else {
      console.log(ev.type);
    }
    if (ev.type === 'COMMIT' || ev.type === 'DDL' || ev.type === 'OTHER') {
      inTxn = true;
    } else if (ev.type === 'VGTID' && inTxn) {
      // A VGTID after a COMMIT, DDL or OTHER is a resume point: save it.
      fs.writeFileSync(args.positionFile, JSON.stringify(ev.vgtid));
      inTxn = false;
      if (args.maxRows && rows >= args.maxRows) {
        call.cancel();
        process.exit(0);
      }
    }
  }
});
call.on('error', (err) => {
  if (err.code === grpc.status.CANCELLED) return;
  console.error(`stream: ${err.message}`);
  process.exit(1);
});
