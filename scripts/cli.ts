/**
 * Conveyor's command line.
 *   npm run cli -- token create --email ada@acme.test [--tenant acme] [--name "ci"]
 */
import { parseArgs } from "node:util";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { closeDb } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { openDatabase } from "./database";

const usage = `usage:
  npm run cli -- token create --email <e-mail> [--tenant <slug>] [--name <label>]`;

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      email: { type: "string" },
      tenant: { type: "string" },
      name: { type: "string" },
      help: { type: "boolean" },
    },
  });
  if (values.help || positionals.join(" ") !== "token create") {
    console.error(usage);
    return values.help ? 0 : 2;
  }
  if (!values.email) {
    console.error(`--email is required\n${usage}`);
    return 2;
  }
  const database = await openDatabase(() => {});
  try {
    const token = await createApiTokenForEmail(values.email, values.name ?? "cli", values.tenant);
    console.log(token);
    console.error("This token is shown once. Send it as: Authorization: Bearer <token>");
    return 0;
  } catch (err) {
    if (err instanceof AppError) {
      console.error(err.message);
      return 1;
    }
    throw err;
  } finally {
    await closeDb();
    await database.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
