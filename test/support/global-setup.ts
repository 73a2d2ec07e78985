// Placeholder: replaced by the embedded-Postgres global setup.
export default function setup(): void {}
