import { defineConfig } from 'vite';

/**
 * The console is a static bundle: `vite build` writes `dist/`, which
 * `docket dev` serves (with `/config.json` naming the services). Browser
 * conditions pick `@docket/client`'s browser entry, which has nothing of
 * Node in it.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: './',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    chunkSizeWarningLimit: 1_000,
  },
});
