// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The demo's and the benchmark's prompts, built exactly as
// scripts/reference/kvrt_prompts.py builds them (the llama.cpp reference and
// baseline use that file), so kvrt and llama.cpp see the same token ids.
#pragma once

#include <string>

namespace kvrt_cli {

inline constexpr const char* kBudgetSentence = "The total budget is 1,000,000 EUR.";
inline constexpr const char* kEditedBudgetSentence = "The total budget is 500,000 EUR.";
inline constexpr const char* kQuestionRisks = "Summarise the risks.";
inline constexpr const char* kQuestionDeadlines = "List the deadlines.";

// The embedded document, trailing newlines stripped.
std::string demo_document();
// The document with the budget sentence changed to 500,000 EUR.
std::string edited_demo_document();
// One user turn: document + "\n\n" + question.
std::string demo_user_message(const std::string& doc, const char* question);
// The multi-document TTFT case (`kvrt bench --only docs`): kArchiveDocs documents asked in turn,
// twice; document k (1-based) is the demo document under a title line of its own.
inline constexpr int kArchiveDocs = 3;
std::string archive_document(const std::string& doc, int k);

}  // namespace kvrt_cli
