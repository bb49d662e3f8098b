import { execFileSync } from "node:child_process";
import { join } from "node:path";

// The dashboard's API types (src/api/schema.d.ts) are generated from the
// OpenAPI document the gateway serves; like the generated proto code, they
// are committed, and this fails when they no longer match the document.

it("has API types generated from the current OpenAPI document", () => {
  const script = join(__dirname, "..", "generate-client.mjs");
  let output = "";
  try {
    execFileSync(process.execPath, [script, "--check"], { encoding: "utf8", stdio: "pipe" });
  } catch (err) {
    output = String((err as { stderr?: string }).stderr ?? err);
  }
  expect(output).toBe("");
});
