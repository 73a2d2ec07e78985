// One way to pick a port: the one `docket dev --replicas` and the nginx front use.
export { freePort } from '@docket/cli';
