// Decodes Kafka records framed in Confluent's Avro wire format (0x00, a 4-byte big-endian
// schema id, the Avro datum) as Confluent's deserializers do: the writer schema is fetched
// from the schema registry by the id in the frame (@kafkajs/confluent-schema-registry, which
// decodes with avsc), never taken from the producer.
//
//   node decode.js --registry http://127.0.0.1:8081 --in records.jsonl
//
// Input: one JSON object a line, {"topic", "key", "value"} with key and value in base64 (null
// for none). Output: one JSON object a line, {"topic", "keyId", "valueId", "key", "value"},
// key and value decoded (bytes as base64, longs as decimal strings); a record that cannot be decoded ends the program
// with an error.
'use strict';
const fs = require('fs');
const avro = require('avsc');
const { SchemaRegistry } = require('@kafkajs/confluent-schema-registry');

// Avro longs as BigInt: Debezium's ts_us and ts_ns are past the 2^53 a JS number holds
// exactly, which avsc refuses to round.
const longType = avro.types.LongType.__with({
  fromBuffer: (buf) => buf.readBigInt64LE(),
  toBuffer: (n) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: BigInt,
  toJSON: Number,
  isValid: (n) => typeof n === 'bigint',
  compare: (a, b) => (a === b ? 0 : a < b ? -1 : 1),
});

function flags(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (k === '--registry') out.registry = v;
    else if (k === '--in') out.in = v;
    else throw new Error(`unknown flag ${k}`);
  }
  if (!out.registry || !out.in) throw new Error('--registry and --in are required');
  return out;
}

// frameId reads the schema id of a framed datum; the decoder checks the magic byte itself.
function frameId(buf) {
  return buf.length >= 5 ? buf.readInt32BE(1) : null;
}

function plain(_, v) {
  if (v && v.type === 'Buffer' && Array.isArray(v.data)) return Buffer.from(v.data).toString('base64');
  if (typeof v === 'bigint') return v.toString();
  return v;
}

async function main() {
  const args = flags(process.argv.slice(2));
  // Every long, plain or with Connect's properties (connect.name of Debezium's time types),
  // is read by longType; a type hook rather than a shared type registry, which would hold
  // the named types of one schema and refuse them in the next.
  const typeHook = (schema) => {
    if (schema === 'long' || (schema && schema.type === 'long' && !schema.logicalType)) return longType;
    return undefined;
  };
  const registry = new SchemaRegistry({ host: args.registry }, { forSchemaOptions: { typeHook } });
  const lines = fs.readFileSync(args.in, 'utf8').split('\n').filter((l) => l.trim() !== '');
  for (const line of lines) {
    const r = JSON.parse(line);
    const out = { topic: r.topic, keyId: null, valueId: null, key: null, value: null };
    if (r.key != null) {
      const b = Buffer.from(r.key, 'base64');
      out.keyId = frameId(b);
      out.key = await registry.decode(b);
    }
    if (r.value != null) {
      const b = Buffer.from(r.value, 'base64');
      out.valueId = frameId(b);
      out.value = await registry.decode(b);
    }
    process.stdout.write(JSON.stringify(out, plain) + '\n');
  }
}

main().catch((err) => {
  process.stderr.write(`decode: ${err.stack || err}\n`);
  process.exit(1);
});
