/**
 * Auth.js (next-auth v5): credentials sign-in with JWT sessions for the browser.
 * Config is built per request so nothing reads the secret at build time.
 * Sign-ins are throttled per account and address (lib/auth/throttle.ts): a
 * locked one fails with the code `throttled`, which the sign-in form and the
 * credentials callback route turn into "wait N seconds" and a 429.
 */
import NextAuth, { CredentialsSignin } from "next-auth";
import Credentials from "next-auth/providers/credentials";
import { signInWithPassword } from "../auth/login";
import { env } from "../env";
import { logger } from "../log";
import { clientAddressFrom } from "./client";

/** A sign-in refused because its account and address (or the address) must wait. */
export class ThrottledSignIn extends CredentialsSignin {
  code = "throttled";
}

declare module "next-auth" {
  interface Session {
    /** When this session signed in, in ms: a password changed since ends it. */
    authAt?: number;
  }
}

const authLog = logger.child({ component: "auth" });

export const { handlers, auth, signIn, signOut } = NextAuth(() => ({
  trustHost: true,
  // Auth.js's own lines through the process's log. A refused sign-in is routine (info, no stack);
  // debug metadata can hold tokens and sessions, so only the message is kept.
  logger: {
    error(error) {
      const type = (error as Error & { type?: string }).type ?? error.name;
      if (error instanceof CredentialsSignin) authLog.info(`[auth] sign-in refused (${type})`);
      else authLog.error({ err: error }, `[auth] ${type}: ${error.message}`);
    },
    warn: (code) => authLog.warn(`[auth] warning: ${code}`),
    debug: (message) => authLog.debug(`[auth] ${message}`),
  },
  secret: env().AUTH_SECRET,
  session: { strategy: "jwt", maxAge: 12 * 60 * 60 },
  pages: { signIn: "/login" },
  providers: [
    Credentials({
      credentials: { email: { label: "E-mail" }, password: { label: "Password", type: "password" } },
      async authorize(raw, request) {
        const email = typeof raw?.email === "string" ? raw.email : "";
        const password = typeof raw?.password === "string" ? raw.password : "";
        if (!email || !password || email.length > 320 || password.length > 1_000) return null;
        const result = await signInWithPassword(email, password, clientAddressFrom(request.headers));
        if (result.ok) return { id: result.user.id, email: result.user.email, name: result.user.name };
        if (result.reason === "throttled") throw new ThrottledSignIn();
        return null;
      },
    }),
  ],
  callbacks: {
    jwt({ token, user }) {
      if (user?.id) {
        token.uid = user.id;
        token.authAt = Date.now();
      }
      return token;
    },
    session({ session, token }) {
      if (typeof token.uid === "string") session.user.id = token.uid;
      if (typeof token.authAt === "number") session.authAt = token.authAt;
      return session;
    },
  },
}));
