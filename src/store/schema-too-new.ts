import type { MigrationFile } from "./migrations.js";

/**
 * The database holds migrations a newer release applied (a version above the highest this
 * release knows): its schema may have columns or rules this release would break, so the store
 * refuses it before applying anything. Migrations only go forward: the way back is the newer
 * release, or the backup taken before the upgrade.
 */
export class SchemaTooNewError extends Error {
  constructor(
    readonly databaseVersion: number,
    readonly knownVersion: number,
    databaseMigration: string,
  ) {
    super(
      `the database was migrated by a newer release: its schema is at version ${databaseVersion} (${databaseMigration}), and this release knows versions up to ${knownVersion}; run the newer release, or restore the backup taken before the upgrade`,
    );
    this.name = "SchemaTooNewError";
  }
}

/** Throws SchemaTooNewError when `applied` (schema_migrations' rows) holds a version above every file of `known`. */
export function refuseNewerSchema(applied: { version: number; name: string }[], known: MigrationFile[]): void {
  const knownVersion = Math.max(0, ...known.map((m) => m.version));
  const newest = applied.reduce<{ version: number; name: string } | null>(
    (top, row) => (top === null || row.version > top.version ? row : top),
    null,
  );
  if (newest && newest.version > knownVersion) throw new SchemaTooNewError(newest.version, knownVersion, newest.name);
}
