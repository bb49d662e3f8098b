// The partition of a keyed event on Kafka, as Java clients and kafkajs'
// DefaultPartitioner choose it: MurmurHash2 (seed 0x9747b28c) of the key's
// UTF-8 bytes, made positive, modulo the topic's partitions. Written here
// because publish picks each event's partition itself, to pack the events of a
// partition (kafka-pack.ts), and kafkajs' version copies every key into a
// Buffer first: about 5 µs an event, the largest part of the partitioning. A
// test holds this to kafkajs' partitioner over random keys.

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

/** Reused for keys that are not ASCII (ids are), so that no Buffer is made per key. */
let scratch = Buffer.allocUnsafe(256);

/** The partition of `key` among `partitions` (at least 1). */
export function partitionOfKey(key: string, partitions: number): number {
  return (murmur2(key) & 0x7fffffff) % partitions;
}

function murmur2(key: string): number {
  let ascii = true;
  for (let i = 0; i < key.length; i++) {
    if (key.charCodeAt(i) > 0x7f) {
      ascii = false;
      break;
    }
  }
  if (ascii) return murmur2Bytes((i) => key.charCodeAt(i), key.length);
  const length = Buffer.byteLength(key);
  if (length > scratch.length) scratch = Buffer.allocUnsafe(length);
  scratch.write(key, 0, "utf8");
  const bytes = scratch;
  return murmur2Bytes((i) => bytes[i]!, length);
}

function murmur2Bytes(byteAt: (index: number) => number, length: number): number {
  let h = SEED ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = byteAt(i) | (byteAt(i + 1) << 8) | (byteAt(i + 2) << 16) | (byteAt(i + 3) << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = length & 3;
  if (tail > 0) {
    if (tail === 3) h ^= byteAt(whole + 2) << 16;
    if (tail >= 2) h ^= byteAt(whole + 1) << 8;
    h ^= byteAt(whole);
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h;
}
