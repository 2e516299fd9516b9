import { carriesCredentials, WebhookTargetSchema } from "./domain/webhook.js";
import { webhookKey } from "./webhooks/signature.js";
import { checkWebhookTarget } from "./webhooks/target-policy.js";

/** The settings the rules between variables read (loadConfig's parsed environment). */
export interface RuledSettings {
  PORT: number;
  AGENT_API_KEYS: string[];
  MAX_RUNS_PER_KEY?: number;
  MAX_SESSIONS_PER_KEY?: number;
  MAX_STREAMS_PER_KEY?: number;
  CORS_ORIGINS: string[];
  HEADERS_TIMEOUT_MS: number;
  REQUEST_TIMEOUT_MS: number;
  METRICS_PORT?: number;
  WEBHOOK_URL: string;
  WEBHOOK_SECRET: string;
  WEBHOOK_ALLOW_PRIVATE: boolean;
  WEBHOOK_RETRY_BASE_MS: number;
  WEBHOOK_RETRY_MAX_MS: number;
}

/**
 * What is wrong with settings each valid alone but not together (or, for the webhook's, valid
 * only as a whole): one message per problem, naming the variable to change; none when fine.
 */
export function settingRuleProblems(data: RuledSettings): string[] {
  const problems: string[] = [];
  const keyed = data.AGENT_API_KEYS.length > 0;
  for (const name of ["MAX_RUNS_PER_KEY", "MAX_SESSIONS_PER_KEY", "MAX_STREAMS_PER_KEY"] as const) {
    if ((data[name] ?? 0) > 0 && !keyed)
      problems.push(`${name}: limits what one API key may take, so it needs AGENT_API_KEYS`);
  }
  if (data.CORS_ORIGINS.includes("*") && !keyed) {
    problems.push(
      "CORS_ORIGINS: * without AGENT_API_KEYS lets any web page a visitor opens drive this server and its tools: name the origins, or set AGENT_API_KEYS",
    );
  }
  if (data.HEADERS_TIMEOUT_MS > data.REQUEST_TIMEOUT_MS) {
    problems.push("HEADERS_TIMEOUT_MS: must not be longer than REQUEST_TIMEOUT_MS");
  }
  if (data.WEBHOOK_RETRY_BASE_MS > data.WEBHOOK_RETRY_MAX_MS) {
    problems.push(
      `WEBHOOK_RETRY_BASE_MS: must not be longer than WEBHOOK_RETRY_MAX_MS (${data.WEBHOOK_RETRY_BASE_MS} > ${data.WEBHOOK_RETRY_MAX_MS}): lower it, or raise WEBHOOK_RETRY_MAX_MS`,
    );
  }
  problems.push(...webhookProblems(data));
  if (data.METRICS_PORT !== undefined && data.METRICS_PORT !== 0 && data.METRICS_PORT === data.PORT) {
    problems.push("METRICS_PORT: must differ from PORT");
  }
  return problems;
}

/** WEBHOOK_SECRET's form, and WEBHOOK_URL: a URL without credentials, signed, to an allowed target. */
function webhookProblems(
  data: Pick<RuledSettings, "WEBHOOK_URL" | "WEBHOOK_SECRET" | "WEBHOOK_ALLOW_PRIVATE">,
): string[] {
  const problems: string[] = [];
  if (data.WEBHOOK_SECRET !== "" && !webhookKey(data.WEBHOOK_SECRET)) {
    problems.push("WEBHOOK_SECRET: must be whsec_ followed by 24 to 64 bytes in base64");
  }
  if (data.WEBHOOK_URL === "") return problems;
  const target = WebhookTargetSchema.safeParse({ url: data.WEBHOOK_URL });
  if (!target.success) problems.push("WEBHOOK_URL: must be an http or https URL");
  else if (carriesCredentials(data.WEBHOOK_URL)) {
    problems.push("WEBHOOK_URL: must not carry credentials (user:pass@): deliveries do not send them");
  } else if (data.WEBHOOK_SECRET === "") problems.push("WEBHOOK_URL: needs WEBHOOK_SECRET (nothing is sent unsigned)");
  else {
    try {
      checkWebhookTarget(target.data, { signing: true, allowPrivate: data.WEBHOOK_ALLOW_PRIVATE });
    } catch (err) {
      problems.push(`WEBHOOK_URL: ${(err as Error).message}`);
    }
  }
  return problems;
}
