import { redirect } from "next/navigation";
import { isOperator } from "@/lib/auth/authorize";
import { sessionPrincipal } from "@/lib/http/principal";
import { landingFor } from "@/lib/client/nav";

/** "/" (and where sign-in leads): operators and platform admins to the console's overview, members to their first page. */
export default async function Home() {
  const principal = await sessionPrincipal();
  if (!principal) redirect("/login");
  redirect(
    landingFor({
      member: principal.tenantId !== null,
      operator: isOperator(principal),
      admin: principal.isPlatformAdmin,
    }),
  );
}
