// Routes a ticket by channel and tags.
const URGENT_TAGS = new Set(["outage", "security"]);

export default function triage({ ticket, policy }) {
  const reasons = [];
  let priority = "normal";
  for (const tag of ticket.tags ?? []) {
    if (URGENT_TAGS.has(tag)) {
      priority = "urgent";
      reasons.push(`tag:${tag}`);
    }
  }
  if (priority === "normal" && ticket.channel === "email") {
    priority = "low";
    reasons.push("channel:email");
  }
  const queue = (policy && policy.queues && policy.queues[priority]) || `${priority}-queue`;
  return { priority, queue, reasons };
}
