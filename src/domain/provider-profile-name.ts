/**
 * The names of the provider profiles (what each OpenAI-compatible provider needs to see again
 * of what it returned; see src/model/provider-profile.ts): a session stores one.
 */
export const PROVIDER_PROFILES = ["openai", "deepseek", "deepseek-thinking", "gemini", "openrouter"] as const;
export type ProviderProfileName = (typeof PROVIDER_PROFILES)[number];

export function isProfileName(value: string): value is ProviderProfileName {
  return (PROVIDER_PROFILES as readonly string[]).includes(value);
}
