// Runs before `npm start`, `npm run dev`, `npm test` and `npm run build`, in plain CommonJS so that
// it runs on any Node.js: an unsupported one stops here with one line, not with a stack trace from
// a dependency that needs a newer runtime (graphile-worker 0.18 needs 22.18, the tus server 20.19).
"use strict";
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(
    `Conveyor needs Node.js 24 LTS (or 22.18 and newer); this is Node.js ${process.versions.node}. See the README's quick start.`,
  );
  process.exit(1);
}
