/** Why a run failed, in words a person can act on, with a stable code. */
export interface RunError {
  code: string;
  message: string;
}
