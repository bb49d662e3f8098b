import { existsSync, statSync } from "node:fs";

/**
 * A program the tests need from Debian's packages: the executable a variable
 * names (e.g. CHROMIUM_PATH), else its default path. Throws, saying how to
 * install it, when it is not there: a test that needs it fails, it is never
 * skipped. Its install script (scripts/install-program.sh behind
 * scripts/<name>/install.sh, run by .ci/run) finds it the same way.
 */
export function installedProgram(program: {
  /** For messages: "Chromium", "SpamAssassin". */
  what: string;
  /** The setting that names another executable. */
  variable: string;
  defaultPath: string;
  /** The Debian package. */
  debianPackage: string;
  /** What needs it, for the message: "the browser tests". */
  neededBy: string;
}): string {
  const explicit = process.env[program.variable];
  const path = explicit || program.defaultPath;
  if (!existsSync(path) || !statSync(path).isFile()) {
    throw new Error(
      explicit
        ? `${program.variable}=${explicit} is not a file: point it at the ${program.what} executable, or unset it to use ${program.defaultPath}`
        : `${program.what} was not found at ${program.defaultPath}; ${program.neededBy} need it: run \`bash scripts/${program.debianPackage}/install.sh\` ` +
            `(Debian's \`${program.debianPackage}\` package through apt-get, as .ci/run does), or set ${program.variable}`,
    );
  }
  return path;
}
