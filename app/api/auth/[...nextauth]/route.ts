// GET|POST /api/auth/* – Auth.js sign-in, sign-out, session. A credentials sign-in that must wait (too
// many failures: its account from its address, its address, or its account from anywhere) answers 429
// with Retry-After before any password is checked.
import { signInWait } from "@/lib/auth/throttle";
import { handlers } from "@/lib/http/auth";
import { clientAddressFrom } from "@/lib/http/client";
import { errorResponse } from "@/lib/http/respond";
import { readBodyText } from "@/lib/http/route";

export const GET = handlers.GET;

export async function POST(req: Request): Promise<Response> {
  let body: string;
  try {
    body = await readBodyText(req);
  } catch (err) {
    return errorResponse(err);
  }
  if (new URL(req.url).pathname.endsWith("/callback/credentials")) {
    const email = new URLSearchParams(body).get("email") ?? "";
    const wait = email ? await signInWait(email, clientAddressFrom(req.headers)) : 0;
    if (wait > 0) {
      return Response.json(
        {
          error: {
            code: "rate_limited",
            message: `Too many failed sign-ins: try again in ${wait} s`,
            details: { retryAfterSeconds: wait },
          },
        },
        { status: 429, headers: { "Retry-After": String(wait) } },
      );
    }
  }
  return handlers.POST(new Request(req, { body }) as Parameters<typeof handlers.POST>[0]);
}
