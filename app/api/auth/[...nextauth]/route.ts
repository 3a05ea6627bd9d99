// GET|POST /api/auth/* – Auth.js sign-in, sign-out, session
import { handlers } from "@/lib/http/auth";

export const { GET, POST } = handlers;
