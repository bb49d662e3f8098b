import { isId, newId, newRandomId } from "../src/index.js";

// Ids of public things (a signup form's, in customers' HTML): random, unlike newId's.

describe("newRandomId", () => {
  it("is an id of the prefix with no time part: one made gives away nothing of the next", () => {
    const ids = Array.from({ length: 200 }, () => newRandomId("frm"));
    expect(ids.every((id) => isId("frm", id))).toBe(true);
    expect(new Set(ids).size).toBe(200);
    // Made in the same few milliseconds, newId's share their time part; these share no prefix beyond chance.
    expect(new Set(Array.from({ length: 200 }, () => newId("frm").slice(4, 10))).size).toBeLessThan(5);
    expect(new Set(ids.map((id) => id.slice(4, 10))).size).toBeGreaterThan(190);
  });
});
