import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { readFileIfPresent, tenantFilePath, writeFileWhole } from "../src/index.js";

// The files kit beside the embedded store (delivery's sandbox bodies, an import's chunks).

describe("tenant files", () => {
  const root = mkdtempSync(path.join(tmpdir(), "tenant-files-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("puts a tenant's files under <root>/<account>/<mode>, and refuses names that could leave it", () => {
    expect(tenantFilePath(root, "acc_1a:test", "imp_2b", "0.part")).toBe(path.join(root, "acc_1a", "test", "imp_2b", "0.part"));
    for (const tenant of ["acc_1a", "acc_1a:prod", "../acc_1a:test", ""]) expect(() => tenantFilePath(root, tenant, "x")).toThrow(TypeError);
    for (const name of ["..", ".hidden", "a/b", "", "a\\b"]) expect(() => tenantFilePath(root, "acc_1a:live", name)).toThrow(TypeError);
  });

  it("writes a file whole (no temporary file left) and reads it back; a missing one is undefined", async () => {
    const file = tenantFilePath(root, "acc_1a:live", "eml_1.json");
    await mkdir(path.dirname(file), { recursive: true });
    expect(await readFileIfPresent(file)).toBeUndefined();
    await writeFileWhole(file, "first");
    await writeFileWhole(file, "second");
    expect((await readFileIfPresent(file))!.toString()).toBe("second");
    expect(readdirSync(path.dirname(file))).toEqual(["eml_1.json"]);
  });
});
