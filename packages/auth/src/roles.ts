/**
 * The closed set of roles a bearer token may carry. `user` and `admin` call
 * the public admission and events services, `worker` calls the execution
 * service, and `service` is the internal role the state service accepts.
 */
export const ROLES = ['user', 'admin', 'worker', 'service'] as const;

/** One of {@link ROLES}. */
export type Role = (typeof ROLES)[number];

/** Whether `value` names a role. */
export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** The authenticated caller: a subject (JWT `sub`) and its role. */
export interface Principal {
  readonly subject: string;
  readonly role: Role;
  /** For a worker whose token names them: the only queues it may serve. */
  readonly queues?: readonly string[];
}
