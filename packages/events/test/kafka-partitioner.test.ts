// publish picks each event's partition itself (to pack a partition's events):
// it must be the partition kafkajs' DefaultPartitioner (Java's murmur2) gives
// the key, or one key's events written before and after would be split.

import { Partitioners } from "kafkajs";
import { partitionOfKey } from "../src/kafka-partitioner.js";

/** A small seeded generator, so that a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe("partitionOfKey", () => {
  const kafkajs = Partitioners.DefaultPartitioner();
  const expected = (key: string, partitions: number) =>
    kafkajs({
      topic: "t",
      partitionMetadata: Array.from({ length: partitions }, (_, partitionId) => ({ partitionErrorCode: 0, partitionId, leader: 0, replicas: [], isr: [] })),
      message: { key, value: null },
    });

  it("agrees with kafkajs' DefaultPartitioner on ids, unicode and odd lengths, for 1 to 64 partitions", () => {
    const next = random(20);
    const alphabet = ["a", "Z", "0", "_", ":", "é", "ß", "ключ", "✓", "😀", "\u0000", "\u007f", "\u0080"];
    const keys = ["", "a", "ab", "abc", "abcd", "eml_01hz8x3v6e0m4n2q7r5s9t1w3y", "sub_0", "acc_x:live"];
    for (let i = 0; i < 3_000; i++) {
      const length = Math.floor(next() * 40);
      let key = i % 2 === 0 ? `eml_${Math.floor(next() * 1e12).toString(36)}` : "";
      for (let j = 0; j < length; j++) key += alphabet[Math.floor(next() * alphabet.length)]!;
      keys.push(key);
    }
    keys.push("x".repeat(1_000) + "ü"); // longer than the reused scratch buffer
    for (const key of keys) {
      for (const partitions of [1, 3, 7, 64]) expect([key, partitionOfKey(key, partitions)]).toEqual([key, expected(key, partitions)]);
    }
  });
});
