/** The fields people type when they join or change their password (lib/auth/accounts.ts). */
import { z } from "zod";
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "./password";

export const email = z
  .string({ error: "must be an e-mail address" })
  .trim()
  .toLowerCase()
  .pipe(z.email({ error: "must be an e-mail address" }).max(320, "must be at most 320 characters"));

export const passwordSchema = z
  .string({ error: "must be a text" })
  .min(MIN_PASSWORD_LENGTH, `must be at least ${MIN_PASSWORD_LENGTH} characters`)
  .max(MAX_PASSWORD_LENGTH, `must be at most ${MAX_PASSWORD_LENGTH} characters`);

export const role = z.enum(["member", "operator"], { error: "must be member or operator" });
