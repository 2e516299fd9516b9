-- A session may name its provider profile (what of a provider's returned state is sent back
-- to it, src/model/provider-profile.ts); NULL: OPENAI_PROVIDER, else detected.
ALTER TABLE sessions ADD COLUMN provider_profile TEXT;
