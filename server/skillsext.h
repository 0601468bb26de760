/*
 * skillsext.h - the MCP Skills extension (SEP-2640: skills/list,
 * skills/get, resources/directory/read) and every skill as a prompt
 * (prompts/list, prompts/get). See docs/skills-extension.md.
 */
#ifndef SKILL_SKILLSEXT_H
#define SKILL_SKILLSEXT_H

struct call;

int skillsext_list(struct call *c);
int skillsext_get(struct call *c);
int skillsext_dir_read(struct call *c);
int skillsext_prompts_list(struct call *c);
int skillsext_prompts_get(struct call *c);

#endif
