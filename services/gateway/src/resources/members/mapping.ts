import type { Invitation, Member } from "../../members/store.js";

export const memberJson = (m: Member) => ({ id: m.id, email: m.email, name: m.name, role: m.role, created_at: m.createdAt });
export const invitationJson = (i: Invitation) => ({ id: i.id, email: i.email, role: i.role, created_at: i.createdAt, expires_at: i.expiresAt });
