// Chat: one message at a time. A model may take a while to answer; the button says so and a
// second click does not ask the character twice. The form still posts without JavaScript.
document.addEventListener("DOMContentLoaded", () => {
  const form = document.querySelector("form.message");
  if (!form) return;
  form.addEventListener("submit", () => {
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    button.textContent = "Waiting for the answer…";
  });
});
