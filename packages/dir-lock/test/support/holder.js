// Takes the lock of the directory in argv[2] and holds it until killed; says
// "locked <pid>" on stdout once it holds it.
const { lockDir } = require("../../dist/index.js");

lockDir(process.argv[2], "test directory", { waitMs: 0 }).then(
  () => {
    process.stdout.write(`locked ${process.pid}\n`);
    setInterval(() => {}, 60_000);
  },
  (error) => {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  },
);
