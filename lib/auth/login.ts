import { db } from "../db";
import { verifyPassword } from "./password";

/** The user for an e-mail and password, or null. Takes the same time whether or not the e-mail exists. */
export async function verifyCredentials(
  email: string,
  password: string,
): Promise<{ id: string; email: string; name: string } | null> {
  const user = await db().user.findUnique({ where: { email: email.trim().toLowerCase() } });
  // A fixed dummy hash keeps timing equal for unknown e-mails.
  const ok = await verifyPassword(password, user?.passwordHash ?? DUMMY_HASH);
  return user && ok ? { id: user.id, email: user.email, name: user.name } : null;
}

const DUMMY_HASH = "scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
