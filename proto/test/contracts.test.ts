import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

// The generated TypeScript is committed (services import it without a
// toolchain); these tests fail when it no longer matches the .proto files, or
// when the contracts break buf's lint rules.
const protoDir = join(__dirname, "..");
const buf = join(protoDir, "..", "node_modules", ".bin", "buf");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

describe("proto contracts", () => {
  it("pass buf lint", () => {
    expect(() => execFileSync(buf, ["lint"], { cwd: protoDir, stdio: "pipe" })).not.toThrow();
  });

  it("have up-to-date generated TypeScript (run `npm run generate` when this fails)", () => {
    const out = mkdtempSync(join(tmpdir(), "emailsvc-gen-"));
    try {
      execFileSync(buf, ["generate", "--output", out], { cwd: protoDir, stdio: "pipe", env: { ...process.env, PATH: `${join(protoDir, "..", "node_modules", ".bin")}:${process.env.PATH}` } });
      const fresh = files(join(out, "gen")).map((f) => relative(join(out, "gen"), f)).sort();
      const committed = files(join(protoDir, "gen")).map((f) => relative(join(protoDir, "gen"), f)).sort();
      expect(committed).toEqual(fresh);
      for (const file of fresh) {
        expect({ file, text: readFileSync(join(protoDir, "gen", file), "utf8") }).toEqual({
          file,
          text: readFileSync(join(out, "gen", file), "utf8"),
        });
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
