/**
 * Lesson questions and their replies (release 3.2.0; §2.3 `question`, §3, §4.3 PATCH,
 * open-points `/products/{product_id}/questions` (+ `/{question_id}`, `/replies`)). Served from
 * their descriptions (`describedOperations`), with the author's name shown by the caller's
 * grant (`users.read_personal`) and the decisions in each operation's text (docs/support.md).
 */
import { questionReplies, questions } from "@syllabus/core"
import type { Operation } from "../operation.js"
import { describedOperations } from "../resources.js"

const tag = "Support"

const authorNote = "`user` is the learner who posted, with their name at the time (a name is not personal data, as on users)."
const disabledNote =
  "When the lesson question settings (`PATCH /settings/support/questions`) have `enabled` false, asking a question, a learner's reply and reopening (`status=open`) answer 409 `feature_disabled`; reads, the account's replies, closing, hiding, pinning and removing still work."
const statusNote =
  "Statuses: `pending` (awaiting moderation), `open` (the queue awaiting a reply), `answered` (the account published a reply), `closed`, `hidden`."

const questionOperations = describedOperations(questions, tag, {
  "questions.list": {
    summary: "List the questions asked on the lessons of a product",
    description: `Newest first (\`sort=created_at\`: oldest first); filters \`status\` (\`status=open\`: the queue awaiting a reply), \`lesson_id\`, \`user_id\`, \`pinned\`. ${statusNote} ${authorNote}`
  },
  "questions.get": { summary: "Retrieve a lesson question", description: authorNote },
  "questions.create": {
    summary: "Record a learner's question on a lesson",
    description: `As the learner integration records it: \`user_id\` (a user of the account) asks on \`lesson_id\` (a lesson of the product), else 422 on the field (reason \`not_found\`). \`body\` is rich text as blocks, at least one, at most 512 KiB; with fewer characters of text than the settings' \`min_length\` it is 422 on \`body\` (reason \`below_min_length\`). The question starts \`pending\` when the settings have \`moderation_enabled\`, else \`open\`. Its body never changes afterwards. ${disabledNote} Event \`question.created\`. ${authorNote}`,
    errors: ["feature_disabled"]
  },
  "questions.update": {
    summary: "Change a question's status or pin it",
    description: `Only \`status\` and \`pinned\`: the question's text cannot be changed (any other field is 422 \`unknown_field\`). Sending \`status=open\` needs \`questions.reopen\` and sending \`pinned\` needs \`questions.pin\`, besides \`questions.update\` (else 403 \`permission_denied\`, nothing saved). \`open\` returns the question to the queue awaiting a reply (it also approves a \`pending\` one); its published replies stay visible. Moves: pending → open, hidden; open → closed, hidden; answered → open, closed, hidden; closed → open, hidden; hidden → open. \`answered\` is reached only by the account's published reply and \`pending\` only at creation: another move is 422 \`invalid_transition\` on \`status\` (reason \`from_<status>\`). The same status is no change. ${disabledNote} Event \`question.updated\`.`,
    errors: ["feature_disabled", "invalid_transition"]
  },
  "questions.delete": {
    summary: "Remove a question and its replies",
    description: "Removed for good with its replies (no trash: the question has no `deleted`). Event `question.deleted`."
  }
})

const replyNote =
  "A reply of the account (`user` null) or a learner's follow-up (`user_id`). `draft` replies are not shown to learners and set the question's `has_draft`; `published` ones count in its `replies_count`. The account's published reply moves an `open` question to `answered`; a learner's published reply moves an `answered` one back to `open`. Each change of the question gives it a new revision and a `question.updated` event."

const replyOperations = describedOperations(questionReplies, tag, {
  "question_replies.list": {
    capability: "questions.read",
    summary: "List the replies to a lesson question, oldest first",
    description: `The conversation's order (\`sort=-created_at\`: newest first); \`status\` narrows to drafts or published replies. ${authorNote}`
  },
  "question_replies.get": { capability: "questions.read", summary: "Retrieve a reply to a lesson question", description: authorNote },
  "question_replies.create": {
    capability: "questions.create",
    summary: "Reply to a lesson question",
    description: `${replyNote} \`status\` defaults to \`published\`. \`user_id\` must name a user of the account (else 422, reason \`not_found\`). A learner's reply is 409 \`feature_disabled\` while lesson questions are switched off; the account's replies are not. Event \`question_reply.created\`. ${authorNote}`,
    errors: ["feature_disabled"]
  },
  "question_replies.update": {
    capability: "questions.update",
    summary: "Edit a reply, or publish a draft",
    description: `\`body\` replaces the reply's text; \`status=published\` publishes a draft (\`published_at\` is set). A published reply cannot go back to \`draft\`: 422 \`invalid_transition\`. ${replyNote} Event \`question_reply.updated\`.`,
    errors: ["invalid_transition"]
  },
  "question_replies.delete": {
    capability: "questions.delete",
    summary: "Remove a reply to a lesson question",
    description: "Removed for good; the question's `replies_count` and `has_draft` follow. Event `question_reply.deleted`."
  }
})

export const questionsRoutes: ReadonlyArray<Operation> = [...questionOperations, ...replyOperations]
