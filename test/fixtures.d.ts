/** Calendar feeds imported as text (Vite's `?raw`). */
declare module "*.ics?raw" {
  const text: string;
  export default text;
}
