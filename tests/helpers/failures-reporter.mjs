/**
 * A node:test reporter that writes only the failed tests, a few lines each.
 * tests/run.ts gives it a file of its own and prints that file after every suite
 * has run, so the end of a long run (all a CI log's tail shows) names what failed
 * in the unit and integration suites too, not only in the last one.
 */
import path from "node:path";
import process from "node:process";

export default async function* failures(source) {
  for await (const event of source) {
    if (event.type !== "test:fail") continue;
    const { name, file, details } = event.data;
    // A failing test also fails its suite; the suite's own line adds nothing.
    if (details?.type === "suite") continue;
    const err = details?.error;
    const cause = err?.cause ?? err;
    const message = String(cause?.message ?? cause ?? "failed")
      .split("\n")
      .slice(0, 6)
      .join("\n    ");
    // (No line: tsx's transform puts a file's tests on a line or two of its own.)
    yield `✖ ${file ? path.relative(process.cwd(), file) : "?"} › ${name}\n    ${message}\n`;
  }
}
