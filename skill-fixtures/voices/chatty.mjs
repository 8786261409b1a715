export default function chatty({ lines }) {
  for (let i = 0; i < lines; i++) {
    console.log(`line ${i}`);
  }
  console.warn("careful");
  return { said: lines + 1 };
}
