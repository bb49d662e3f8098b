// Lets plain `node` run the TypeScript sources and tests, the way Jest does
// (SWC, CommonJS, "./x.js" imports resolved to "./x.ts"):
//   node -r ./swc-register.js some-script.ts
const fs = require("node:fs");
const Module = require("node:module");
const { transformSync } = require("@swc/core");

require.extensions[".ts"] = (module, filename) => {
  const { code } = transformSync(fs.readFileSync(filename, "utf8"), {
    filename,
    jsc: { target: "es2022", parser: { syntax: "typescript" } },
    module: { type: "commonjs" },
    sourceMaps: "inline",
  });
  module._compile(code, filename);
};

const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  try {
    return resolve.call(this, request, parent, ...rest);
  } catch (err) {
    if (request.startsWith(".") && request.endsWith(".js")) {
      return resolve.call(this, request.slice(0, -3) + ".ts", parent, ...rest);
    }
    throw err;
  }
};
