import { expect, it } from "vitest";
import { failureWords } from "../../src/runs/run-failure.js";
import { StorageError } from "../../src/store/errors.js";
import { translatePgError } from "../../src/store/pg/pg-errors.js";
import { translateSqliteError } from "../../src/store/sqlite-errors.js";

const driverError = (message: string, code: string) => Object.assign(new Error(message), { code });

it("a refused privilege or credential is a StorageError of kind `denied`, over PostgreSQL and SQLite", () => {
  const kinds = [
    translatePgError(driverError("permission denied for table messages", "42501")),
    translatePgError(driverError('password authentication failed for user "agent"', "28P01")),
    translateSqliteError(driverError("access permission denied", "SQLITE_PERM")),
    translateSqliteError(driverError("authorization denied", "SQLITE_AUTH")),
  ].map((err) => (err instanceof StorageError ? err.kind : err));
  expect(kinds).toEqual(["denied", "denied", "denied", "denied"]);
});

it("what a run's clients are told of a failure carries none of the driver's text", () => {
  const failures = [
    translatePgError(driverError("permission denied for table messages", "42501")),
    translatePgError(driverError("connect ECONNREFUSED 127.0.0.1:5433", "ECONNREFUSED")),
    translatePgError(driverError('relation "messages" does not exist', "42P01")),
    translateSqliteError(driverError("database or disk is full", "SQLITE_FULL")),
    new TypeError("Cannot read properties of undefined (reading 'seq')"),
  ];
  const told = failures.map((err) => failureWords(err).what);
  expect(told).toEqual([
    "the database refused the server's access (permissions)",
    "the database could not be reached",
    "an unexpected error (the server log has it, under the run's id)",
    "the database's disk is full",
    "an unexpected error (the server log has it, under the run's id)",
  ]);
});
