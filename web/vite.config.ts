// Vite build of the browser UI: two pages (the client area at / and the admin panel at /admin) into web/dist.
// Preact components use htm tagged templates, so no JSX transform or plugin is needed.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/',
  publicDir: false,
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    rolldownOptions: {
      input: {
        client: `${root}index.html`,
        admin: `${root}admin/index.html`,
      },
    },
  },
});
