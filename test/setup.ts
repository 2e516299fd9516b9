import { afterAll, afterEach } from "vitest";
import { removeLeftovers } from "./helpers/leftovers.js";

// Run before every test file (vitest's setupFiles), so these hooks belong to each file; being
// registered first, they run after the file's own after-hooks (its servers closed by then).
afterEach(() => removeLeftovers("test"));
afterAll(() => removeLeftovers("file"));
